import type { PiiEntity } from '../model/guardrails.js';

/** One detected value in a text: `[start, end)` and what it is. */
export interface Match {
  start: number;
  end: number;
  /** The entity (`email`, `card`, …) or a guardrail's label. */
  category: string;
}

/** Luhn's checksum over the digits of `s` (separators ignored): true when it holds. */
export function luhnValid(s: string): boolean {
  let sum = 0;
  let double = false;
  let digits = 0;
  for (let i = s.length - 1; i >= 0; i--) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) continue;
    digits++;
    let d = c;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return digits > 0 && sum % 10 === 0;
}

/** ISO 13616 lengths of the IBAN countries (a wrong length is no IBAN). */
const IBAN_LENGTHS: Readonly<Record<string, number>> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BR: 29, CH: 21, CR: 22, CY: 28, CZ: 24, DE: 22, DK: 18,
  DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27, GT: 28, HR: 21, HU: 28, IE: 22,
  IL: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LI: 21, LT: 20, LU: 20, LV: 21, MC: 27, MD: 24, ME: 22, MK: 19, MR: 27,
  MT: 31, MU: 30, NL: 18, NO: 15, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, SA: 24, SE: 24, SI: 19, SK: 24, SM: 27,
  TN: 24, TR: 26, UA: 29, VG: 24, XK: 20,
};

/** The IBAN check: the country's length and mod-97 of the rearranged number equal to 1. */
export function ibanValid(raw: string): boolean {
  const iban = raw.replace(/ /g, '').toUpperCase();
  if (IBAN_LENGTHS[iban.slice(0, 2)] !== iban.length) return false;
  const moved = iban.slice(4) + iban.slice(0, 4);
  let rest = 0;
  for (const ch of moved) {
    const code = ch.charCodeAt(0);
    const value = code >= 65 ? code - 55 : code - 48;
    rest = value >= 10 ? (rest * 100 + value) % 97 : (rest * 10 + value) % 97;
  }
  return rest === 1;
}

/** US SSN rules: area not 000, 666 or 9xx; group not 00; serial not 0000. */
export function ssnValid(area: string, group: string, serial: string): boolean {
  return area !== '000' && area !== '666' && area[0] !== '9' && group !== '00' && serial !== '0000';
}

interface Detector {
  entity: PiiEntity;
  re: RegExp;
  /** A further check on the match (checksums); absent: the pattern is enough. */
  valid?(m: RegExpExecArray): boolean;
}

const IPV4_OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const H = '[0-9A-Fa-f]{1,4}';

const DETECTORS: readonly Detector[] = [
  // Secrets first: an API key may hold what looks like other entities.
  {
    entity: 'secret',
    re: new RegExp([
      '-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----[\\s\\S]*?-----END (?:[A-Z]+ )*PRIVATE KEY-----',
      '\\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{20,}',
      '\\b(?:AKIA|ASIA)[0-9A-Z]{16}\\b',
      '\\bgh[pousr]_[A-Za-z0-9]{36,255}\\b',
      '\\bgithub_pat_[A-Za-z0-9_]{22,255}\\b',
      '\\bxox[abpors]-[A-Za-z0-9-]{10,}',
      '\\bAIza[0-9A-Za-z_-]{35}\\b',
      '\\bsk_(?:live|test)_[0-9A-Za-z]{24,}\\b',
      '\\bglpat-[0-9A-Za-z_-]{20}\\b',
    ].join('|'), 'g'),
  },
  { entity: 'email', re: /\b[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}\b/g },
  {
    entity: 'iban',
    re: /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b/g,
    valid: (m) => ibanValid(m[0]),
  },
  {
    entity: 'card',
    // 13 to 19 digits, in groups split by single spaces or dashes, not inside a longer number.
    re: /(?<![\d.-])(?:\d[ -]?){12,18}\d(?![\d-])/g,
    valid: (m) => {
      const digits = m[0].replace(/[ -]/g, '');
      return digits.length >= 13 && digits.length <= 19 && /^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6)/.test(digits) && luhnValid(digits);
    },
  },
  {
    entity: 'ssn',
    re: /(?<![\w.-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\w-])/g,
    valid: (m) => ssnValid(m[1] ?? '', m[3] ?? '', m[4] ?? ''),
  },
  {
    entity: 'ip',
    re: new RegExp([
      `(?<![\\d.])${IPV4_OCTET}(?:\\.${IPV4_OCTET}){3}(?![\\d.]|\\.\\d)`,
      // IPv6: eight groups, or fewer around one `::` (at least two groups or a trailing `::x`).
      `(?<![:\\w])(?:${H}(?::${H}){7}|(?:${H}:){1,6}:(?:${H}(?::${H}){0,5})?|::(?:${H}:){0,5}${H})(?![:\\w])`,
    ].join('|'), 'g'),
    valid: (m) => m[0].includes('.') || m[0].split(':').filter(Boolean).length >= 2,
  },
  {
    entity: 'phone',
    // International (+CC …) or North American (555) 555-5555 / 555-555-5555 / 555.555.5555.
    re: /(?<![\w+])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){2,4}|\(\d{3}\) ?\d{3}[-. ]\d{4}|\d{3}([-.])\d{3}\1\d{4})(?![\w-])/g,
    valid: (m) => {
      const digits = m[0].replace(/\D/g, '').length;
      return digits >= 8 && digits <= 15;
    },
  },
];

/**
 * The PII in `text` of the entities asked for, without overlaps (an earlier detector's
 * match wins; then the earlier and longer one). Each check (Luhn, mod-97, SSN rules)
 * keeps near misses — a card number whose checksum fails, an invalid IBAN — out.
 */
export function detectPii(text: string, entities: ReadonlySet<PiiEntity>): Match[] {
  const found: Match[] = [];
  for (const d of DETECTORS) {
    if (!entities.has(d.entity)) continue;
    d.re.lastIndex = 0;
    for (let m = d.re.exec(text); m !== null; m = d.re.exec(text)) {
      if (d.valid && !d.valid(m)) continue;
      const start = m.index;
      const end = start + m[0].length;
      if (found.some((f) => start < f.end && end > f.start)) continue;
      found.push({ start, end, category: d.entity });
    }
  }
  return found.sort((a, b) => a.start - b.start);
}
