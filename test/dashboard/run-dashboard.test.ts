/**
 * `genpipe run --dashboard 0` in headless Chromium: the credits spent and estimated at the dry run's
 * prices (the emulator's costs), and the actions a run takes from the page. Screenshots go to a folder
 * under the OS temp dir.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { usePromptFolders } from '../cli/prompt-folder.ts';
import { heldGenerations, hold, unhold } from '../helpers/emulator.ts';
import { EDIT_OR_PROMPT_RECIPE } from '../pipeline/child-run.ts';
import {
  newWatchedPage,
  openDashboard,
  rowOf,
  spawnDashboard,
  useDashboardBed,
} from './dashboard-helpers.ts';

const promptFolder = usePromptFolders();
const bed = useDashboardBed('run');

it('counts the credits spent and estimated at the prices a dry run uses', async () => {
  const { input, out } = promptFolder({
    'a.txt': 'a red fox',
    'b.txt': 'a blue fox',
    'c.txt': 'a green fox',
  });
  writeFileSync(join(input, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const held = await hold(bed.emu, { prompt: 'blue' });
  try {
    const { child, url, token } = await spawnDashboard(bed, ['run', input, '--out', out, '--dashboard', '0']);
    const { page, problems } = await newWatchedPage(bed);
    await openDashboard(page, url, token);
    await heldGenerations(bed.emu, 1);
    await rowOf(page, 'a.txt', 'succeeded').waitFor({ timeout: 30_000 });
    await rowOf(page, 'c.txt', 'succeeded').waitFor({ timeout: 30_000 });
    // Two images done at 1 credit each; the third at the service, one more to come.
    await page
      .locator('#credits', {
        hasText: /^credits: 2 spent, about 3 in all at the emulator's configured costs/,
      })
      .waitFor();
    await page.screenshot({ path: bed.shot('1-credits.png') });
    await unhold(bed.emu, held);
    expect((await child.exited).code, child.stderr()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  } finally {
    await unhold(bed.emu).catch(() => undefined);
  }
}, 120_000);
