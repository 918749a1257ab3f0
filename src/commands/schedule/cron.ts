// Checks a `--cron` expression and a `--timezone` before anything talks to Temporal, so a typo is exit 2 with the
// field named even when the server is down. The grammar is the one Temporal Schedules accept for cron strings
// (5, 6 or 7 fields, names for months and weekdays, @-shortcuts); the server stays the final judge.

interface CronField {
  name: string;
  min: number;
  max: number;
  /** Names accepted for values, e.g. JAN → 1; index + offset is the value. */
  names?: { list: readonly string[]; offset: number };
}

const months = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
const weekdays = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

const second: CronField = { name: 'second', min: 0, max: 59 };
const minute: CronField = { name: 'minute', min: 0, max: 59 };
const hour: CronField = { name: 'hour', min: 0, max: 23 };
const dayOfMonth: CronField = { name: 'day of month', min: 1, max: 31 };
const month: CronField = { name: 'month', min: 1, max: 12, names: { list: months, offset: 1 } };
// 7 is Sunday as well, as in most crons (and Temporal).
const dayOfWeek: CronField = { name: 'day of week', min: 0, max: 7, names: { list: weekdays, offset: 0 } };
const year: CronField = { name: 'year', min: 1970, max: 9999 };

const layouts: Record<number, CronField[]> = {
  5: [minute, hour, dayOfMonth, month, dayOfWeek],
  6: [minute, hour, dayOfMonth, month, dayOfWeek, year],
  7: [second, minute, hour, dayOfMonth, month, dayOfWeek, year],
};

const shortcuts = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'];

/** Why `expression` is not a cron string Temporal accepts, or undefined when it is. */
export function cronProblem(expression: string): string | undefined {
  // A trailing "# comment" is allowed by Temporal.
  const text = expression.replace(/#.*$/, '').trim();
  if (text === '') return 'is empty; expected 5 fields: minute hour day-of-month month day-of-week';
  if (/^(CRON_)?TZ=/i.test(text)) return 'sets its own time zone; use --timezone instead';
  if (text.startsWith('@')) {
    if (shortcuts.includes(text.toLowerCase())) return undefined;
    if (/^@every\s+\d+[smhd](\/\d+[smhd])?$/i.test(text)) return undefined;
    return `${JSON.stringify(text)} is not one of ${shortcuts.join(', ')} or "@every <n>[s|m|h|d]"`;
  }
  const parts = text.split(/\s+/);
  const layout = layouts[parts.length];
  if (!layout) {
    return `has ${parts.length} field${parts.length === 1 ? '' : 's'}; expected 5 (minute hour day-of-month month day-of-week), 6 (+ year) or 7 (second first, + year)`;
  }
  for (const [i, field] of layout.entries()) {
    const problem = fieldProblem(parts[i] ?? '', field);
    if (problem) return `${field.name} field ${JSON.stringify(parts[i])}: ${problem}`;
  }
  return undefined;
}

function fieldProblem(text: string, field: CronField): string | undefined {
  for (const item of text.split(',')) {
    if (item === '') return 'has an empty list item';
    const [range = '', step, extra] = item.split('/');
    if (extra !== undefined) return `${JSON.stringify(item)} has more than one "/"`;
    if (step !== undefined && !/^[1-9]\d*$/.test(step)) {
      return `step ${JSON.stringify(step)} is not a positive whole number`;
    }
    if (range === '*') continue;
    const [from = '', to, more] = range.split('-');
    if (more !== undefined) return `${JSON.stringify(range)} is not a value or a range a-b`;
    for (const bound of to === undefined ? [from] : [from, to]) {
      const value = valueOf(bound, field);
      if (value === undefined) {
        const names = field.names ? ` or a name (${field.names.list.join(', ')})` : '';
        return `${JSON.stringify(bound)} is not a number${names}`;
      }
      if (value < field.min || value > field.max) return `${value} is out of range ${field.min}-${field.max}`;
    }
    if (to !== undefined && (valueOf(to, field) ?? 0) < (valueOf(from, field) ?? 0)) {
      return `range ${JSON.stringify(range)} ends before it starts`;
    }
  }
  return undefined;
}

function valueOf(text: string, field: CronField): number | undefined {
  if (/^\d+$/.test(text)) return Number(text);
  const index = field.names?.list.indexOf(text.toUpperCase()) ?? -1;
  return index >= 0 && field.names ? index + field.names.offset : undefined;
}

/** Why `zone` is not an IANA time zone name, or undefined when it is. */
export function timezoneProblem(zone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return undefined;
  } catch {
    return `${JSON.stringify(zone)} is not a time zone name (expected an IANA name such as UTC or Europe/Paris)`;
  }
}
