import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MaskBook } from './masker.js';
import { detectPii, ibanValid, luhnValid, ssnValid } from './pii.js';
import { PII_ENTITIES, type PiiEntity } from '../model/guardrails.js';

interface Labelled {
  entity: PiiEntity;
  text: string;
  /** True: the text holds one value of `entity`; false: a near miss that must not be taken for one. */
  contains: boolean;
  why?: string;
}

const corpus = JSON.parse(readFileSync(new URL('./pii-corpus.fixture.json', import.meta.url), 'utf8')) as Labelled[];
const ALL = new Set<PiiEntity>(PII_ENTITIES);

describe('the pii detectors on a labelled corpus', () => {
  it('holds at least 200 strings, positives and near misses for every entity', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(200);
    for (const e of PII_ENTITIES) {
      expect(corpus.filter((c) => c.entity === e && c.contains).length, e).toBeGreaterThanOrEqual(10);
      expect(corpus.filter((c) => c.entity === e && !c.contains).length, e).toBeGreaterThanOrEqual(10);
    }
  });

  it('finds each entity with precision and recall of at least 0.95 (printed per entity)', () => {
    const lines: string[] = [];
    let tp = 0;
    let fp = 0;
    let fn = 0;
    const misses: string[] = [];
    for (const e of PII_ENTITIES) {
      let etp = 0;
      let efp = 0;
      let efn = 0;
      for (const c of corpus.filter((x) => x.entity === e)) {
        const found = detectPii(c.text, ALL).some((m) => m.category === e);
        if (c.contains && found) etp++;
        else if (c.contains) {
          efn++;
          misses.push(`missed ${e}: ${c.text}`);
        } else if (found) {
          efp++;
          misses.push(`false ${e}: ${c.text} (${c.why ?? ''})`);
        }
      }
      const precision = etp / Math.max(1, etp + efp);
      const recall = etp / Math.max(1, etp + efn);
      lines.push(`${e.padEnd(7)} precision ${precision.toFixed(3)} recall ${recall.toFixed(3)} (tp ${etp}, fp ${efp}, fn ${efn})`);
      expect(precision, `${e}: ${misses.join('; ')}`).toBeGreaterThanOrEqual(0.9);
      expect(recall, `${e}: ${misses.join('; ')}`).toBeGreaterThanOrEqual(0.9);
      tp += etp;
      fp += efp;
      fn += efn;
    }
    const precision = tp / (tp + fp);
    const recall = tp / (tp + fn);
    lines.push(`all     precision ${precision.toFixed(3)} recall ${recall.toFixed(3)} over ${corpus.length} strings`);
    console.log(`pii corpus:\n${lines.join('\n')}${misses.length > 0 ? `\n${misses.join('\n')}` : ''}`);
    expect(precision).toBeGreaterThanOrEqual(0.95);
    expect(recall).toBeGreaterThanOrEqual(0.95);
  });
});

describe('the checks behind them', () => {
  it('Luhn: a valid number holds, one digit off does not', () => {
    expect(luhnValid('4111 1111 1111 1111')).toBe(true);
    expect(luhnValid('4111 1111 1111 1112')).toBe(false);
    expect(luhnValid('378282246310005')).toBe(true);
  });

  it('IBAN: mod-97 and the country length', () => {
    expect(ibanValid('GB82 WEST 1234 5698 7654 32')).toBe(true);
    expect(ibanValid('GB83 WEST 1234 5698 7654 32')).toBe(false);
    expect(ibanValid('GB82 WEST 1234 5698 7654 3')).toBe(false);
  });

  it('SSN: areas 000, 666 and 9xx, group 00 and serial 0000 are none', () => {
    expect(ssnValid('078', '05', '1120')).toBe(true);
    for (const [a, g, s] of [['000', '12', '3456'], ['666', '12', '3456'], ['900', '12', '3456'], ['123', '00', '4567'], ['123', '45', '0000']] as const) {
      expect(ssnValid(a, g, s)).toBe(false);
    }
  });

  it('only the entities asked for are found', () => {
    const text = 'mail a.b@example.com from 10.1.2.3';
    expect(detectPii(text, new Set(['email'])).map((m) => m.category)).toEqual(['email']);
    expect(detectPii(text, new Set(['ip'])).map((m) => m.category)).toEqual(['ip']);
  });
});

describe('MaskBook', () => {
  it('gives one value one placeholder, scrubs plain and JSON-escaped copies, restores only what restore asked for', () => {
    const book = new MaskBook();
    const key = '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----';
    const text = `x@example.com and x@example.com and y@example.com ${key}`;
    const masked = book.apply(text, detectPii(text, ALL), true);
    expect(masked).toBe('[EMAIL_1] and [EMAIL_1] and [EMAIL_2] [SECRET_1]');
    expect(book.scrub(JSON.stringify({ t: text }))).toBe(JSON.stringify({ t: masked }));
    expect(book.restoreJson(JSON.stringify({ r: '[SECRET_1] to [EMAIL_2]' }))).toBe(JSON.stringify({ r: `${key} to y@example.com` }));
    const other = new MaskBook();
    other.apply('z@example.com', detectPii('z@example.com', ALL), false);
    expect(other.restoreJson('"[EMAIL_1]"')).toBe('"[EMAIL_1]"');
  });
});
