/**
 * The web console in headless Chromium (playwright-core, Debian's chromium): every page at 1280 and
 * 390 px wide, navigated from the keyboard, checked by axe-core (no serious or critical violation)
 * and photographed (compat/results/console-screenshots/), against a real broker child process with
 * data from kafkajs.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import type { Browser, Page } from 'playwright-core';
import { axe, launchChromium, screenshot, seriousViolations, skipWithoutChromium, watchedPage } from '../helpers/browser.js';
import { startChildBroker, tempDir, type ChildBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';

const WIDTHS = [1280, 390] as const;

describe('web console in a browser (/ui)', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let broker: ChildBroker;
  let kafka: Kafka;
  let browser: Browser;
  let base: string;

  before(async function () {
    skipWithoutChromium(this);
    const dataDir = cleanup.add(tempDir('gregor-console-ui-'), (d) => rmSync(d, { recursive: true, force: true }));
    broker = await startChildBroker(dataDir, 0, { 'group.initial.rebalance.delay.ms': '0' });
    cleanup.defer(async () => {
      broker.child.kill('SIGTERM');
      await broker.exited;
    });
    base = `http://${broker.admin ?? ''}/ui`;
    kafka = new Kafka({ clientId: 'console-ui-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: 'ui-orders', messages: [{ key: 'k1', value: JSON.stringify({ id: 1, status: 'new' }) }] });
    await producer.disconnect();
    browser = cleanup.add(await launchChromium(), (b) => b.close());
  });
  after(() => cleanup.run());

  /** A page at `width` that fails the test on any script error or CSP violation. */
  const open = (width: number): Promise<{ page: Page; errors: string[] }> => watchedPage(browser, cleanup, width);

  async function checkA11y(page: Page, what: string): Promise<void> {
    const serious = seriousViolations(await axe(page));
    expect(serious, `${what}:\n${serious.join('\n')}`).to.deep.equal([]);
  }

  for (const width of WIDTHS) {
    it(`overview at ${width} px: live charts, keyboard navigation, no serious axe violations`, async () => {
      const { page, errors } = await open(width);
      await page.goto(base);
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await page.getByText('Messages per second').waitFor();
      await page.locator('.stat', { hasText: 'Brokers' }).getByText('1').waitFor();
      await checkA11y(page, `overview at ${width}`);
      await screenshot(page, `overview-${width}`);
      // the keyboard alone: the skip link comes first, then the brand and the main navigation
      await page.keyboard.press('Tab');
      expect(
        await page.evaluate(
          () => (globalThis as unknown as { document: { activeElement: { textContent: string } } }).document.activeElement.textContent,
        ),
      ).to.equal('Skip to content');
      let reached = false;
      for (let i = 0; i < 8 && !reached; i++) {
        await page.keyboard.press('Tab');
        reached = await page.evaluate(
          () =>
            (globalThis as unknown as { document: { activeElement: { textContent: string } } }).document.activeElement.textContent ===
            'Topics',
        );
      }
      expect(reached, 'Tab reaches the Topics link').to.equal(true);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { level: 1, name: 'Topics' }).waitFor();
      expect(page.url()).to.match(/#\/topics$/);
      await checkA11y(page, `topics at ${width}`);
      await screenshot(page, `topics-${width}`);
      expect(errors).to.deep.equal([]);
    });
  }

  it('creates a topic from the form, opens its page, sets a config and resets it', async () => {
    const { page, errors } = await open(1280);
    await page.goto(`${base}#/topics`);
    await page.getByText('Create a topic').click();
    await page.getByLabel('Name').fill('ui-created');
    await page.getByLabel('Partitions').fill('2');
    await page.getByLabel('Configs (key=value per line)').fill('retention.ms=7200000');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('status').getByText('Created ui-created').waitFor();
    await page.getByRole('link', { name: 'ui-created' }).click();
    await page.getByRole('heading', { level: 1, name: 'ui-created' }).waitFor();
    await page.getByRole('cell', { name: '7200000' }).waitFor();
    await page.getByRole('combobox', { name: /^Config/ }).selectOption('segment.ms');
    await page.getByLabel('New value').fill('600000');
    await page.getByRole('button', { name: 'Set', exact: true }).click();
    await page.getByRole('status').getByText('Set segment.ms=600000').waitFor();
    await page.getByRole('button', { name: 'Reset retention.ms' }).click();
    await page.getByRole('status').getByText('Reset retention.ms to its default').waitFor();
    await checkA11y(page, 'topic page');
    await screenshot(page, 'topic-1280');
    expect(errors).to.deep.equal([]);
  });

  it('topic page at 390 px has no serious axe violations', async () => {
    const { page, errors } = await open(390);
    await page.goto(`${base}#/topics/ui-orders`);
    await page.getByRole('heading', { level: 2, name: 'Partitions' }).waitFor();
    await checkA11y(page, 'topic page at 390');
    await screenshot(page, 'topic-390');
    expect(errors).to.deep.equal([]);
  });

  for (const width of WIDTHS) {
    it(`message browser at ${width} px: produce JSON from the form, find it with a filter, see a kafkajs record arrive in the live tail`, async () => {
      const { page, errors } = await open(width);
      await page.goto(`${base}#/topics/ui-orders/messages`);
      await page.getByRole('heading', { level: 1, name: 'Messages in ui-orders' }).waitFor();
      await page.getByText('Produce a message').click();
      const form = page.getByRole('form', { name: 'Produce a message' });
      await form.getByRole('textbox', { name: 'Key', exact: true }).fill(`form-${width}`);
      await form.getByRole('combobox', { name: /^Value is/ }).selectOption('json');
      await form.getByLabel('Value', { exact: true }).fill(JSON.stringify({ id: width, status: 'from-form' }));
      await form.getByLabel('Headers (name:value per line)').fill('origin:browser');
      await form.getByRole('button', { name: 'Produce' }).click();
      await page
        .getByRole('status')
        .getByText(/Produced to partition 0 at offset/)
        .waitFor();
      await page.getByLabel('Filter expression').fill(`value.status == "from-form" && value.id == ${width} && headers.origin == "browser"`);
      await page.getByRole('button', { name: 'Show', exact: true }).click();
      await page.getByRole('status').getByText('1 message shown').waitFor();
      await page.getByRole('cell', { name: `form-${width}` }).waitFor();
      await checkA11y(page, `messages at ${width}`);
      await screenshot(page, `messages-${width}`);
      // live tail with the filter: a matching record from kafkajs shows up
      await page.getByLabel('Filter expression').fill('value.tail == true');
      await page.getByRole('button', { name: 'Live tail' }).click();
      await page.getByRole('status').getByText('Live tail: waiting for new messages').waitFor();
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({
        topic: 'ui-orders',
        messages: [
          { key: 'skip', value: '{"tail":false}' },
          { key: `tailed-${width}`, value: '{"tail":true}' },
        ],
      });
      await producer.disconnect();
      await page.getByRole('cell', { name: `tailed-${width}` }).waitFor();
      expect(await page.getByRole('cell', { name: 'skip', exact: true }).count()).to.equal(0);
      await page.getByRole('button', { name: 'Stop live tail' }).click();
      expect(errors).to.deep.equal([]);
    });
  }

  for (const width of WIDTHS) {
    it(`groups, a group with its reset preview, and requests at ${width} px: no serious axe violations`, async () => {
      const consumer = kafka.consumer({ groupId: `ui-group-${width}` });
      await consumer.connect();
      await consumer.subscribe({ topic: 'ui-orders', fromBeginning: true });
      let seen = 0;
      await consumer.run({
        eachMessage: () => {
          seen++;
          return Promise.resolve();
        },
      });
      while (seen === 0) await new Promise((r) => setTimeout(r, 100));
      await consumer.disconnect();
      const { page, errors } = await open(width);
      await page.goto(`${base}#/groups`);
      await page.getByRole('link', { name: `ui-group-${width}` }).click();
      await page.getByRole('heading', { level: 2, name: 'Lag per partition' }).waitFor();
      await page.getByRole('combobox', { name: /^To/ }).selectOption('start');
      await page.getByRole('button', { name: 'Preview' }).click();
      await page.getByRole('region', { name: 'Reset preview' }).waitFor();
      await checkA11y(page, `group at ${width}`);
      await screenshot(page, `group-${width}`);
      await page.getByRole('button', { name: 'Apply reset' }).click();
      await page
        .getByRole('status')
        .getByText(/Offsets of 1 partition\(s\) reset/)
        .waitFor();
      await page.goto(`${base}#/groups`);
      await page.getByRole('heading', { level: 1, name: 'Consumer groups' }).waitFor();
      await checkA11y(page, `groups at ${width}`);
      await screenshot(page, `groups-${width}`);
      await page.goto(`${base}#/requests`);
      await page.getByRole('heading', { level: 2, name: 'Fault injection rules' }).waitFor();
      await page.getByRole('button', { name: 'Add rule' }).click();
      await page.getByRole('button', { name: /^Remove rule/ }).waitFor();
      await checkA11y(page, `requests at ${width}`);
      await screenshot(page, `requests-${width}`);
      await page.getByRole('button', { name: /^Remove rule/ }).click();
      await page.getByText('No rules.').waitFor();
      expect(errors).to.deep.equal([]);
    });
  }
});
