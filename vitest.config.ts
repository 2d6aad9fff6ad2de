import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'plugins/**/*.test.ts', 'simulator/**/*.test.ts', 'cli/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // End-to-end files each start their own gateway and simulator on ephemeral ports.
    fileParallelism: true,
  },
});
