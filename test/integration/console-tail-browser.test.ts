/**
 * The message page's live tail in headless Chromium (issue 19: a tailing page must cost little):
 * it keeps the newest TAIL_ROWS rows and says so, drops the oldest as more arrive, and shows long
 * values as one-line previews whose whole (JSON pretty-printed) form is drawn only when the row's
 * details are opened. Records come from kafkajs to a real broker child process.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import type { Browser, Page } from 'playwright-core';
import { axe, launchChromium, screenshot, seriousViolations, skipWithoutChromium, watchedPage } from '../helpers/browser.js';
import { startChildBroker, tempDir } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { createTopic, until } from '../helpers/console.js';

const TOPIC = 'ui-tail';
/** ui/pages/messages.js TAIL_ROWS */
const TAIL_ROWS = 200;

describe('web console live tail in a browser: a bounded row list, values drawn whole only when opened', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let kafka: Kafka;
  let browser: Browser;
  let base: string;

  before(async function () {
    skipWithoutChromium(this);
    const dataDir = cleanup.add(tempDir('gregor-console-tail-'), (d) => rmSync(d, { recursive: true, force: true }));
    const broker = await startChildBroker(dataDir, 0, {});
    cleanup.defer(async () => {
      broker.child.kill('SIGTERM');
      await broker.exited;
    });
    base = `http://${broker.admin ?? ''}/ui`;
    kafka = new Kafka({ clientId: 'console-tail-ui', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    await createTopic(kafka, TOPIC, 1);
    browser = cleanup.add(await launchChromium(), (b) => b.close());
  });
  after(() => cleanup.run());

  async function tailPage(): Promise<{ page: Page; errors: string[] }> {
    const { page, errors } = await watchedPage(browser, cleanup, 1280);
    await page.goto(`${base}#/topics/${TOPIC}/messages`);
    await page.getByRole('button', { name: 'Live tail' }).click();
    await page.getByRole('status').getByText('Live tail: waiting for new messages').waitFor();
    return { page, errors };
  }

  const rows = (page: Page) => page.getByRole('region', { name: 'Messages' }).locator('tbody tr');

  it(`keeps the newest ${TAIL_ROWS} rows and says so`, async () => {
    const { page, errors } = await tailPage();
    const producer = kafka.producer();
    await producer.connect();
    cleanup.add(producer, (p) => p.disconnect());
    // 6 sends of 45 (each under the tail's 50 a round per partition, a round apart): 270 records, none skipped
    for (let s = 0; s < 6; s++) {
      await producer.send({
        topic: TOPIC,
        messages: Array.from({ length: 45 }, (_v, i) => ({ key: `r${s * 45 + i}`, value: JSON.stringify({ n: s * 45 + i }) })),
      });
      await page.getByRole('cell', { name: `r${s * 45 + 44}`, exact: true }).waitFor();
    }
    await page.getByRole('status').getByText(`Live tail: 270 messages received, the newest ${TAIL_ROWS} at most shown`).waitFor();
    expect(await rows(page).count()).to.equal(TAIL_ROWS);
    // the oldest 70 went, the newest stayed, in order
    expect(await page.getByRole('cell', { name: 'r69', exact: true }).count()).to.equal(0);
    expect(await rows(page).first().getByRole('cell', { name: 'r70', exact: true }).count()).to.equal(1);
    expect(await rows(page).last().getByRole('cell', { name: 'r269', exact: true }).count()).to.equal(1);
    // rows are kept by place: a value opened in the first row closes when newer records push it out
    await rows(page).first().locator('summary').click();
    expect(await rows(page).first().locator('pre').textContent()).to.equal(JSON.stringify({ n: 70 }, null, 2));
    await producer.send({
      topic: TOPIC,
      messages: Array.from({ length: 45 }, (_v, i) => ({ key: `r${270 + i}`, value: JSON.stringify({ n: 270 + i }) })),
    });
    await page.getByRole('cell', { name: 'r314', exact: true }).waitFor();
    expect(await rows(page).first().getByRole('cell', { name: 'r115', exact: true }).count()).to.equal(1);
    expect(await page.locator('details[open]').count()).to.equal(0);
    expect(await page.locator('pre').count()).to.equal(0);
    await page.getByRole('button', { name: 'Stop live tail' }).click();
    await page.getByRole('status').getByText('Live tail stopped').waitFor();
    expect(errors).to.deep.equal([]);
  });

  it('shows a long value as a preview and draws its whole form (JSON pretty-printed) only when opened', async () => {
    const { page, errors } = await tailPage();
    const long = { id: 'long-1', items: Array.from({ length: 40 }, (_v, i) => ({ sku: `sku-${i}`, qty: i })) };
    const text = 'x'.repeat(300) + 'END';
    const producer = kafka.producer();
    await producer.connect();
    cleanup.add(producer, (p) => p.disconnect());
    await producer.send({
      topic: TOPIC,
      messages: [
        { key: 'json-long', value: JSON.stringify(long) },
        { key: 'text-long', value: text },
        { key: 'short', value: 'plain' },
      ],
    });
    const row = (key: string) => rows(page).filter({ has: page.getByRole('cell', { name: key, exact: true }) });
    await until('the three rows', async () => ((await rows(page).count()) === 3 ? true : undefined));
    // previews: one line, cut with an ellipsis; no whole form in the page yet
    const jsonSummary = row('json-long').locator('summary');
    expect(await jsonSummary.textContent()).to.match(/^\{"id":"long-1","items":\[\{"sku":"sku-0".*…$/);
    expect((await jsonSummary.textContent())?.length).to.equal(121);
    expect(await row('text-long').locator('summary').textContent()).to.equal(`${'x'.repeat(120)}…`);
    expect(await page.locator('pre').count()).to.equal(0);
    expect(await row('short').getByText('plain', { exact: true }).count()).to.equal(1);
    // opened: the whole value, JSON pretty-printed
    await jsonSummary.click();
    const pre = row('json-long').locator('pre');
    expect(await pre.textContent()).to.equal(JSON.stringify(long, null, 2));
    await row('text-long').locator('summary').click();
    expect(await row('text-long').locator('pre').textContent()).to.equal(text);
    // closed again: the whole form goes
    await jsonSummary.click();
    await until('the pretty form removed', async () => ((await pre.count()) === 0 ? true : undefined));
    await screenshot(page, 'messages-tail-1280');
    const serious = seriousViolations(await axe(page));
    expect(serious, serious.join('\n')).to.deep.equal([]);
    await page.getByRole('button', { name: 'Stop live tail' }).click();
    expect(errors).to.deep.equal([]);
  });

  it('a load of the page still unanswered when the live tail starts does not overwrite its status or rows', async () => {
    // The page loads the newest messages when it opens; on a busy machine that answer can come after
    // the live tail started (its `ready` event), and it used to replace the tail's status and rows.
    const { page, errors } = await watchedPage(browser, cleanup, 1280);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held = 0;
    await page.route(
      (url) => url.pathname.endsWith(`/topics/${TOPIC}/messages`),
      async (route) => {
        held++;
        await released;
        await route.continue();
      },
    );
    await page.goto(`${base}#/topics/${TOPIC}/messages`);
    await until('the first load held', () => Promise.resolve(held > 0 ? true : undefined));
    await page.getByRole('button', { name: 'Live tail' }).click();
    const status = page.getByRole('status');
    await status.getByText('Live tail: waiting for new messages').waitFor();
    const answered = page.waitForResponse((r) => new URL(r.url()).pathname.endsWith(`/topics/${TOPIC}/messages`));
    release();
    expect((await answered).status()).to.equal(200);
    // what the page does with the answer happens within a few frames of it
    await page.waitForTimeout(500);
    expect(await status.textContent()).to.equal('Live tail: waiting for new messages');
    expect(await rows(page).count()).to.equal(0);
    await page.getByRole('button', { name: 'Stop live tail' }).click();
    expect(errors).to.deep.equal([]);
  });
});
