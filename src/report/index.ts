// Postmortems from workflow histories: pure code (no Temporal client), so it runs the same online and offline.
import { renderHtml } from './html.js';
import { renderMarkdown } from './markdown.js';
import type { Postmortem } from './model.js';

export { buildPostmortem, type BuildOptions } from './build.js';
export { HistoryFormatError } from './events.js';
export { renderHtml } from './html.js';
export { renderMarkdown } from './markdown.js';
export type * from './model.js';

export const reportFormats = ['md', 'html', 'json'] as const;
export type ReportFormat = (typeof reportFormats)[number];

export function renderPostmortem(pm: Postmortem, format: ReportFormat): string {
  if (format === 'html') return renderHtml(pm);
  if (format === 'json') return `${JSON.stringify(pm, null, 2)}\n`;
  return renderMarkdown(pm);
}
