import { describe, expect, it } from 'vitest';
import { newExchange } from './exchange.js';
import { HookRegistry, type ShortCircuit } from './hooks.js';

const answer: ShortCircuit = { respond: async () => ({ costPicos: 0n }) };

describe('HookRegistry.run', () => {
  it('makes no promise when no hook has anything to wait for', () => {
    const hooks = new HookRegistry();
    const ran: string[] = [];
    hooks.add('a', 'post-billing', () => void ran.push('a'));
    hooks.add('b', 'post-billing', () => void ran.push('b'));
    expect(hooks.run('post-billing', newExchange('req_1', 'chat', 0))).toBeUndefined();
    expect(hooks.run('billing', newExchange('req_2', 'chat', 0))).toBeUndefined();
    expect(ran).toEqual(['a', 'b']);
  });

  it('runs each hook after the one before has finished, and stops at the first ShortCircuit', async () => {
    const hooks = new HookRegistry();
    const ran: string[] = [];
    hooks.add('a', 'pre-upstream', () => void ran.push('a'));
    hooks.add('b', 'pre-upstream', async () => {
      await new Promise((r) => setTimeout(r, 5));
      ran.push('b');
    });
    hooks.add('c', 'pre-upstream', () => {
      ran.push('c');
      return answer;
    });
    hooks.add('d', 'pre-upstream', () => void ran.push('d'));
    const outcome = hooks.run('pre-upstream', newExchange('req_3', 'chat', 0));
    expect(ran).toEqual(['a']);
    expect(await outcome).toBe(answer);
    expect(ran).toEqual(['a', 'b', 'c']);
  });

  it('answers a ShortCircuit returned at once as a promise of it', async () => {
    const hooks = new HookRegistry();
    hooks.add('a', 'pre-upstream', () => answer);
    const outcome = hooks.run('pre-upstream', newExchange('req_4', 'chat', 0));
    expect(outcome).toBeInstanceOf(Promise);
    expect(await outcome).toBe(answer);
  });

  it('turns a hook that throws into a rejected promise, as an async hook\'s failure', async () => {
    const hooks = new HookRegistry();
    const ran: string[] = [];
    hooks.add('a', 'post-billing', () => {
      throw new Error('broken hook');
    });
    hooks.add('b', 'post-billing', () => void ran.push('b'));
    let outcome: Promise<unknown> | undefined;
    expect(() => {
      outcome = hooks.run('post-billing', newExchange('req_5', 'chat', 0));
    }).not.toThrow();
    await expect(outcome).rejects.toThrow('broken hook');
    expect(ran).toEqual([]);
  });
});
