// Shared by the UI drivers: required environment variables, and the system Chromium
// launched the way this machine allows (playwright's own browsers are never downloaded).

import { chromium } from 'playwright-core';

export const env = name => {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set`);
  }
  return v;
};

export const launchChromium = () =>
  chromium.launch({
    executablePath: env('TILE_LAB_CHROMIUM'),
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'
    ] // playwright gives the browser a fresh temporary profile
  });

export const stepLogger = () => {
  const started = Date.now();
  return what =>
    process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${what}\n`);
};
