// The errors of the Temporal layer that the CLI maps to exit codes (src/cli/run-command.ts). Apart from
// codec.ts and connection.ts, which throw them, so that mapping loads neither the Temporal client nor its protos.

/** LIFTOFF_PAYLOAD_KEY (or its id) is set but unusable; raised at startup, before anything is sent. */
export class PayloadKeyError extends Error {
  override name = 'PayloadKeyError';
}

/** Raised when no Temporal frontend answers; the CLI maps it to exit code 3. */
export class TemporalUnreachableError extends Error {
  override name = 'TemporalUnreachableError';
  constructor(
    readonly address: string,
    cause: unknown,
  ) {
    super(
      `cannot reach Temporal at ${address}: ${cause instanceof Error ? cause.message : String(cause)}. ` +
        'Start the embedded server with `liftoff dev`, or point TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE at your cluster.',
    );
  }
}
