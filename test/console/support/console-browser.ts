/// <reference lib="dom" />
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { PlanEventPublisher } from '../../../src/publisher';
import { type ApiStack, startApiStack } from '../../http/http-harness';
import { REDIS_URL, silentLogger } from '../../worker/helpers/queue-harness';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Where screenshots go (git-ignored). */
export const ARTIFACTS = path.join(__dirname, '..', '..', '..', 'test-artifacts', 'console');

/**
 * A real `plan-ledger serve` and worker on a throwaway SQLite database and queue prefix
 * (startApiStack), a publisher on that queue, and a headless Chromium (Debian's, driven by
 * playwright-core).
 */
export interface ConsoleBrowser {
  stack: ApiStack;
  browser: Browser;
  publisher: PlanEventPublisher;
  /**
   * A new 1400x900 page signed in with `key` (null: at the sign-in page), its dialogs accepted and
   * kept in `dialogs`; `globalThis.__pwned` is 0 before any script of the page runs (markup that
   * executed would change it).
   */
  openPage(key: string | null): Promise<{ page: Page; dialogs: string[] }>;
  close(): Promise<void>;
}

export async function startConsoleBrowser(
  stackOptions: Parameters<typeof startApiStack>[1] = {},
): Promise<ConsoleBrowser> {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (bash .ci/run does), or set CHROMIUM_PATH`);
  const stack = await startApiStack('sqlite', stackOptions);
  const journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-console-'));
  const publisher = new PlanEventPublisher({
    redisUrl: REDIS_URL,
    queuePrefix: stack.prefix,
    logger: silentLogger(),
    journalDir,
  });
  const closeServer = async () => {
    await publisher.close(5_000);
    await stack.close();
    fs.rmSync(journalDir, { recursive: true, force: true });
  };
  const browser = await chromium
    .launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
    .catch(async (err: unknown) => {
      await closeServer();
      throw err;
    });
  return {
    stack,
    browser,
    publisher,
    async openPage(key) {
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      const page = await context.newPage();
      const dialogs: string[] = [];
      page.on('dialog', (d) => {
        dialogs.push(d.message());
        void d.accept();
      });
      await page.addInitScript(() => Object.defineProperty(globalThis, '__pwned', { value: 0, writable: true }));
      await page.goto(stack.server.url + '/');
      await page.waitForSelector('#signin');
      if (key !== null) {
        await page.fill('#api-key', key);
        await page.click('#signin button[type=submit]');
        await page.waitForSelector('#nav a');
      }
      return { page, dialogs };
    },
    async close() {
      await browser.close();
      await closeServer();
    },
  };
}

/** A screenshot in ARTIFACTS of the whole page, or with `{ fullPage: false }` of what the viewport shows. */
export async function shot(page: Page, name: string, o: { fullPage?: boolean } = {}): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: o.fullPage ?? true });
}
