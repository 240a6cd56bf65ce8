import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's headless chromium with a throw-away profile, for the console's browser tests. */
export class ConsoleBrowser {
  private constructor(
    readonly context: BrowserContext,
    readonly page: Page,
    private readonly profile: string,
  ) {}

  static async launch(): Promise<ConsoleBrowser> {
    const profile = await mkdtemp(join(tmpdir(), 'mgw-console-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
      viewport: { width: 1280, height: 860 },
    });
    const page = context.pages()[0] ?? (await context.newPage());
    return new ConsoleBrowser(context, page, profile);
  }

  async close(): Promise<void> {
    await this.context.close();
    await rm(this.profile, { recursive: true, force: true });
  }
}
