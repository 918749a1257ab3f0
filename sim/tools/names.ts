/** The simulated tools: each is a shim in a host's bin/ and an entry of main.ts, which the type holds to this list. */
export const toolNames = [
  'systemctl',
  'docker',
  'nvidia-smi',
  'ray',
  'vllm',
  'gpu-hog',
  'container-shim',
] as const;

export type ToolName = (typeof toolNames)[number];
