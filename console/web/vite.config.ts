import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** Build identity: KRUNTIMES_BUILD when the release pipeline sets it, else the git commit. */
function buildId(): string {
  const fromEnv = process.env.KRUNTIMES_BUILD;
  if (fromEnv) return fromEnv;
  try {
    return execSync('git rev-parse --short=12 HEAD', { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return 'dev';
  }
}

export default defineConfig({
  plugins: [react()],
  define: {
    __APP_VERSION__: JSON.stringify(process.env.KRUNTIMES_VERSION ?? pkg.version),
    __APP_BUILD__: JSON.stringify(buildId()),
    __APP_BUILD_TIME__: JSON.stringify(new Date().toISOString()),
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    // The server's CSP forbids inline script; keep every asset a separate file.
    assetsInlineLimit: 0,
  },
  server: {
    // `npm run dev` proxies the API to a locally running Console (CONSOLE_URL).
    proxy: process.env.CONSOLE_URL
      ? {
          '/api': { target: process.env.CONSOLE_URL, secure: false, changeOrigin: true },
          '/v1': { target: process.env.CONSOLE_URL, secure: false, changeOrigin: true, ws: true },
        }
      : undefined,
  },
  test: {
    include: ['src/**/*.test.{ts,tsx}'],
    environment: 'node',
  },
});
