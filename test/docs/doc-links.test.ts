/**
 * The docs hold together: every relative link of README.md, docs/*.md and docs/commands/*.md leads to a
 * file that exists and, with a `#fragment`, to one of its headings (GitHub's anchors); and what a newcomer
 * asks first is answered within two clicks of the README.
 */
import { existsSync, statSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .replace(/^#+ /, '')
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');
}

/** The text outside fenced code blocks. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '');
}

function anchorsOf(text: string): Set<string> {
  return new Set(
    prose(text)
      .split('\n')
      .filter((l) => /^#{1,6} /.test(l))
      .map(anchorOf),
  );
}

/** The relative links of a markdown file, as written. */
function linksOf(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((u) => !/^[a-z]+:/.test(u));
}

async function docs(): Promise<string[]> {
  const top = (await readdir(join(ROOT, 'docs'))).filter((n) => n.endsWith('.md')).map((n) => `docs/${n}`);
  const commands = (await readdir(join(ROOT, 'docs', 'commands')))
    .filter((n) => n.endsWith('.md'))
    .map((n) => `docs/commands/${n}`);
  return ['README.md', ...top, ...commands];
}

/** Where a link of `from` leads, relative to the root: [file, fragment]. */
function target(from: string, link: string): [string, string] {
  const [path, fragment = ''] = link.split('#');
  const file = path === '' ? from : normalize(relative(ROOT, join(ROOT, dirname(from), path!)));
  return [file, fragment];
}

describe('the links of the docs', () => {
  it('every relative link leads to a file and, with #fragment, to one of its headings', async () => {
    const broken: string[] = [];
    for (const file of await docs()) {
      for (const link of linksOf(await readFile(join(ROOT, file), 'utf8'))) {
        const [to, fragment] = target(file, link);
        const full = join(ROOT, to);
        if (!existsSync(full)) broken.push(`${file}: (${link}): no such file ${to}`);
        else if (fragment !== '' && !statSync(full).isDirectory()) {
          if (!anchorsOf(await readFile(full, 'utf8')).has(fragment)) {
            broken.push(`${file}: (${link}): ${to} has no heading #${fragment}`);
          }
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('answers the first questions within two clicks of the README', async () => {
    /** Each question, and a text of its answer. */
    const questions: Array<[string, string]> = [
      ['how do I keep a source video under the edit limit', 'ffmpeg -i long.mp4 -t 17.9'],
      ['how do I run on three machines', 'npx genpipe worker --files-at-once 8'],
      ['how do I get a second variant of a photo', '--redo-same-content'],
      ['what does exit code 3 mean', '**3** the batch stopped early'],
      ['how do I resume after a crash', '**Resume**: after a `kill -9`, a reboot or a power cut'],
    ];
    const reach = new Map<string, number>([['README.md', 0]]);
    for (let clicks = 1; clicks <= 2; clicks++) {
      for (const [file, depth] of [...reach]) {
        if (depth !== clicks - 1 || !file.endsWith('.md')) continue;
        for (const link of linksOf(await readFile(join(ROOT, file), 'utf8'))) {
          const [to] = target(file, link);
          if (!reach.has(to) && existsSync(join(ROOT, to)) && !statSync(join(ROOT, to)).isDirectory()) {
            reach.set(to, clicks);
          }
        }
      }
    }
    for (const [question, answer] of questions) {
      const where: string[] = [];
      for (const file of reach.keys()) {
        if ((await readFile(join(ROOT, file), 'utf8')).includes(answer)) where.push(file);
      }
      expect(where, `${question}: '${answer}' is in no page within two clicks of README.md`).not.toEqual([]);
    }
  });
});
