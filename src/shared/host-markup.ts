// Text from hosts and servers (error bodies, log lines, nvidia-smi names, ray status) inside markup: Slack's
// `text` and the Markdown of the Temporal UI's current details and of the postmortem. Host text is hostile, so it
// is never live markup there: no `<!channel>`, no disguised link, no image beacon. It goes into a code span whose
// fence it cannot close. Pure: workflow code and the report both import it.

/** Slack's three control characters escaped as Slack documents (&amp; &lt; &gt;): for every part of a message. */
export function slackEscape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/**
 * Host text for Slack's `text`: escaped, in a code span (a code block when it has several lines). Slack has no
 * longer fences and no escape for a backtick, so a backtick in the text becomes `'` and cannot close the span.
 */
export function slackHostText(text: string): string {
  if (text === '') return '(empty)';
  const body = slackEscape(text.replaceAll('`', "'"));
  return /[\r\n]/.test(body) ? `\`\`\`\n${body}\n\`\`\`` : `\`${body}\``;
}

/**
 * Host text for Markdown (CommonMark, GitHub's tables): one code span on one line. Its fence is longer than any
 * run of backticks in the text; line breaks show as `\n`, so the text cannot start a block of its own; in a table
 * cell (`tableCell`) a pipe is escaped, which GitHub's tables undo inside a code span, so it cannot end the cell.
 */
export function markdownHostText(text: string, options: { tableCell?: boolean } = {}): string {
  if (text === '') return '(empty)';
  const oneLine = text.replace(/\r\n|\r|\n/g, '\\n');
  const longestRun = Math.max(0, ...[...oneLine.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longestRun + 1);
  // A text starting or ending with a backtick would join the fence; CommonMark takes one space off each end
  // when both ends have one. Padded with a space on each side in those cases, the text comes back exact.
  const pad = /^`|`$|^ [^]* $/.test(oneLine) ? ' ' : '';
  const span = `${fence}${pad}${oneLine}${pad}${fence}`;
  return options.tableCell ? span.replaceAll('|', '\\|') : span;
}
