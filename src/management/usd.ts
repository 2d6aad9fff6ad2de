import { invalidField } from '../lib/errors.js';
import { fieldLabel } from '../lib/field-messages.js';
import { AmountTooLargeError, parseUsdToMicros, type Micros } from '../lib/money.js';

/** A USD amount from a request (number or decimal string, at most 6 decimals, at most MAX_BALANCE_MICROS either way) as micro-USD. */
export function usdInput(value: number | string, field: string): Micros {
  const text = typeof value === 'number' ? String(value) : value.trim();
  const negative = text.startsWith('-');
  try {
    const micros = parseUsdToMicros(negative ? text.slice(1) : text);
    return negative ? -micros : micros;
  } catch (err) {
    if (err instanceof AmountTooLargeError) throw invalidField(field, `${fieldLabel(field)}: ${err.message}`);
    throw invalidField(field, `${fieldLabel(field)} must be a USD amount with at most 6 decimals, e.g. 25 or 10.50`);
  }
}
