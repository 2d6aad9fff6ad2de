import { describe, expect, it } from 'vitest';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.js';

describe('console passwords', () => {
  it('verifies the password it hashed, and nothing else; the hash does not contain it', async () => {
    const hash = await hashPassword('correct horse battery staple');
    expect(hash).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(hash).not.toContain('correct');
    expect(await verifyPassword('correct horse battery staple', hash)).toBe(true);
    expect(await verifyPassword('correct horse battery stapler', hash)).toBe(false);
    expect(await hashPassword('correct horse battery staple')).not.toBe(hash); // salted
  });

  it('never verifies against a malformed stored hash', async () => {
    for (const stored of ['', 'plain', 'bcrypt$1$2$3$x$y', 'scrypt$0$8$1$c2FsdA==$aGFzaA==', 'scrypt$16384$8$1$c2FsdA==$']) {
      expect(await verifyPassword('whatever', stored)).toBe(false);
    }
  });

  it('asks for 10 to 1024 characters', () => {
    expect(passwordProblem('short')).toMatch(/at least 10/);
    expect(passwordProblem('x'.repeat(1025))).toMatch(/at most 1024/);
    expect(passwordProblem('long enough')).toBeUndefined();
  });
});
