/**
 * The out folder names of inputs (folderPlace, choosePlace): every input path gets one a folder can
 * have, inside the out dir, at most 255 bytes a segment, and two inputs never share one.
 */
import { expect, it } from 'vitest';
import { folderPlace, isFolderPlace, itemOutDir } from '../../src/pipeline/report/item-paths.ts';
import { choosePlace } from '../../src/pipeline/store/item-place.ts';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

it('keeps an ordinary path, control characters included, and escapes a backslash', () => {
  expect(folderPlace('photos/a.jpg')).toBe('photos/a.jpg');
  expect(folderPlace('photos/a.jpg', 2)).toBe('photos/a-2.jpg');
  expect(folderPlace('x/archive.tar.gz', 3)).toBe('x/archive.tar-3.gz');
  expect(folderPlace('we\u001b[31mird\n.txt')).toBe('we\u001b[31mird\n.txt');
  expect(folderPlace('dir\\x/a\\b.txt')).toBe('dir%5Cx/a%5Cb.txt');
  expect(folderPlace('a/../b.txt')).toBe('a/%2E%2E/b.txt');
  expect(() => itemOutDir('/out', 'a\\b.txt')).toThrow();
  expect(isFolderPlace(folderPlace('a\\b.txt'))).toBe(true);
});

it('cuts a name longer than 255 bytes at the end of its stem, whole characters, keeping suffix and extension', () => {
  const long = `${'é'.repeat(200)}.mp4`;
  for (const n of [0, 1, 12]) {
    const place = folderPlace(`d/${long}`, n);
    const name = place.split('/')[1] as string;
    expect(bytes(name)).toBeLessThanOrEqual(255);
    expect(name.endsWith(n === 0 ? 'é.mp4' : `é-${n}.mp4`)).toBe(true);
    expect(isFolderPlace(place)).toBe(true);
  }
  // Escaping may lengthen a folder segment past the limit: it is cut too.
  const folder = '\\'.repeat(200);
  expect(bytes(folderPlace(`${folder}/a.txt`).split('/')[0] as string)).toBeLessThanOrEqual(255);
  // An "extension" too long to keep is cut as part of the name.
  const odd = `a.${'x'.repeat(300)}`;
  expect(bytes(folderPlace(odd, 1))).toBe(255);
  expect(isFolderPlace('n'.repeat(256))).toBe(false);
});

it('gives two inputs whose escaped or cut names agree two places', () => {
  const taken = new Set<string>();
  const place = (input: string) => {
    const p = choosePlace(input, (c) => taken.has(c));
    taken.add(p);
    return p;
  };
  expect(place('a%5Cb.txt')).toBe('a%5Cb.txt');
  expect(place('a\\b.txt')).toBe('a%5Cb-1.txt');
  const a = place(`${'n'.repeat(300)}-a.txt`);
  const b = place(`${'n'.repeat(300)}-b.txt`);
  expect(a).not.toBe(b);
  expect([bytes(a), bytes(b)]).toEqual([255, 255]);
});

it("never gives an input the name of one of the batch's own files at the top of the out dir", () => {
  expect(folderPlace('report.json')).toBe('report-1.json');
  expect(folderPlace('report.json', 1)).toBe('report-2.json');
  expect(folderPlace('Report.HTML')).toBe('Report-1.HTML');
  expect(folderPlace('report.html/a.png')).toBe('report-1.html/a.png');
  expect(folderPlace('.thumbs/a.png')).toBe('.thumbs-1/a.png');
  expect(folderPlace('photos/report.json')).toBe('photos/report.json');
  expect(choosePlace('report.json', (p) => p === 'report-1.json')).toBe('report-2.json');
});
