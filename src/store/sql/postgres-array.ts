/**
 * PostgreSQL array literals (`{"a","b",NULL}`) for the store's unnest statements, built directly
 * from the row values the store produces: strings, finite numbers, booleans, Dates and null. The
 * pg driver would build the same text, but through its generic value preparation and two regex
 * passes per element: with a JSON payload per event that was a tenth of the worker's store CPU.
 */
export function pgArrayLiteral(values: readonly unknown[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    out += element(values[i]);
  }
  return `${out}}`;
}

/** The array literal of one property of every row: `pgArrayLiteral(rows.map((r) => r[property]))` without the array. */
export function pgColumnLiteral(rows: readonly object[], property: string): string {
  let out = '{';
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) out += ',';
    out += element((rows[i] as Record<string, unknown>)[property]);
  }
  return `${out}}`;
}

/**
 * The last instant written and its text: rows of one plan or one transaction come in runs of the
 * same instant (the transaction's time, a plan's creation time), and toISOString is the costliest
 * step of an element.
 */
let lastTime = NaN;
let lastText = '';

function instant(value: Date): string {
  const time = value.getTime();
  if (time === lastTime) return lastText;
  if (Number.isNaN(time)) throw new TypeError('cannot store an invalid Date');
  lastText = value.toISOString();
  lastTime = time;
  return lastText;
}

function element(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`cannot store the number ${value}`);
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'undefined':
      return 'NULL';
    case 'object':
      if (value === null) return 'NULL';
      if (value instanceof Date) return instant(value);
      break;
  }
  throw new TypeError(`cannot store a value of type ${typeof value} in an array column`);
}

/** Always quoted: an empty string, `NULL`, or text with commas, braces or blanks stays a string. */
function quote(text: string): string {
  if (text.indexOf('"') === -1 && text.indexOf('\\') === -1) return `"${text}"`;
  return `"${text.replace(/["\\]/g, '\\$&')}"`;
}
