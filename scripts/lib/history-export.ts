// A run's event history the way a user exports it (`temporal workflow show --output json`), and the export's
// text with its payloads decoded, where a leaked value would show. Shared by scripts/record-histories.ts and
// the tests that read exports; tooling, not part of the product.

export interface HistoryExportTarget {
  /** Temporal frontend, host:port. */
  address: string;
  namespace: string;
  workflowId: string;
  runId: string;
}

/** The `temporal` CLI arguments that print the run's history as JSON. */
export function historyExportArgs(t: HistoryExportTarget): string[] {
  return [
    'workflow',
    'show',
    '--address',
    t.address,
    '--namespace',
    t.namespace,
    '--workflow-id',
    t.workflowId,
    '--run-id',
    t.runId,
    '--output',
    'json',
  ];
}

/** The exported history's text with every payload (base64 `data`) decoded. */
export function decodedText(json: string): string {
  const decoded: string[] = [json];
  JSON.parse(json, (key, value: unknown) => {
    if (key === 'data' && typeof value === 'string')
      decoded.push(Buffer.from(value, 'base64').toString('utf8'));
    return value;
  });
  return decoded.join('\n');
}
