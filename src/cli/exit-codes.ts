export const ExitCode = {
  ok: 0,
  deployFailed: 1,
  invalidInput: 2,
  temporalUnreachable: 3,
} as const;
