import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'plugins/**/*.test.ts', 'simulator/**/*.test.ts', 'cli/**/*.test.ts', 'test/**/*.test.ts'],
    // A CLI test runs several `node bin/gateway.js …` processes in turn (0.7 s each on an idle
    // machine, several seconds each while three test files load both cores): 20 s was seen to
    // cut one that was only slow.
    testTimeout: 60_000,
    hookTimeout: 20_000,
    // End-to-end files each start their own gateway and simulator on ephemeral ports.
    fileParallelism: true,
    // Most files wait on child processes, sockets and databases rather than the CPU; vitest's
    // default (CPUs − 1) runs them one at a time on a 2-core machine. Three at once halved the
    // suite's wall time there (631 s → 311 s) with the same results.
    maxWorkers: 3,
  },
});
