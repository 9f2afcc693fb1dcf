// One Chromium for a test run's drivers of one kind (tests/browser_env.py starts it per test
// worker): a playwright browser server launched exactly as launchChromium(kind) would launch
// it, so a driver that connects sees the same browser, without paying a browser start
// (~1.5 s of CPU) each. Prints the endpoint on its first line; stops when its stdin closes.
//
// Environment: TILE_LAB_CHROMIUM (the system Chromium), TILE_LAB_BROWSER_KIND (ui | probe).

import { BROWSER_ARGS, chromium, env } from './browser.mjs';

const kind = env('TILE_LAB_BROWSER_KIND');
const server = await chromium.launchServer({
  executablePath: env('TILE_LAB_CHROMIUM'), headless: true, args: BROWSER_ARGS[kind]
});
process.stdout.write(`${server.wsEndpoint()}\n`);
process.stdin.resume();
process.stdin.on('end', async () => {
  await server.close();
  process.exit(0);
});
