#!/usr/bin/env node
// Fails when a function in src/ is longer than MAX_LINES lines, unless the comment just above it
// (a line comment or its doc comment) says why: `// long-function: <reason>`.
// A function's length runs from its first to its last line, nested functions included; nested
// functions are checked in their own right too.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const MAX_LINES = 120;
const ROOT = process.argv[2] ?? 'src';
const MARKER = /\blong-function:(.*)$/;

function sourceFiles(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => relative(process.cwd(), join(e.parentPath ?? e.path, e.name)))
    .sort();
}

function isFunctionLike(node) {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

/** The declaration a function is written as: `const f = () => …` is known by its statement. */
function anchorOf(node) {
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent)) {
    const list = parent.parent;
    return ts.isVariableDeclarationList(list) && ts.isVariableStatement(list.parent) ? list.parent : parent;
  }
  if (ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent;
  if (ts.isExportAssignment(parent)) return parent;
  return node;
}

function nameOf(node) {
  if (node.name) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (
    ts.isVariableDeclaration(parent) ||
    ts.isPropertyAssignment(parent) ||
    ts.isPropertyDeclaration(parent)
  ) {
    return parent.name.getText();
  }
  if (ts.isCallExpression(parent)) return `<callback of ${parent.expression.getText().slice(0, 40)}>`;
  return '<anonymous>';
}

/**
 * The reason given in the comments directly above `anchor` (no blank line between them), or
 * undefined when there is no marker, or '' when the marker gives no reason.
 */
function reasonAbove(sf, anchor) {
  const text = sf.getFullText();
  const comments = ts.getLeadingCommentRanges(text, anchor.getFullStart()) ?? [];
  let nextLine = sf.getLineAndCharacterOfPosition(anchor.getStart(sf)).line;
  for (let i = comments.length - 1; i >= 0; i--) {
    const c = comments[i];
    const endLine = sf.getLineAndCharacterOfPosition(c.end).line;
    if (endLine < nextLine - 1) break;
    for (const line of text.slice(c.pos, c.end).split('\n')) {
      const m = MARKER.exec(line.replace(/\*\/\s*$/, ''));
      if (m) return m[1].trim();
    }
    nextLine = sf.getLineAndCharacterOfPosition(c.pos).line;
  }
  return undefined;
}

function check(file) {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found = [];
  const visit = (node) => {
    if (isFunctionLike(node)) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const length = last - first + 1;
      if (length > MAX_LINES) {
        found.push({
          where: `${file}:${first + 1}`,
          name: nameOf(node),
          length,
          reason: reasonAbove(sf, anchorOf(node)),
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

const long = sourceFiles(ROOT).flatMap(check);
const failing = long.filter((f) => !f.reason);
for (const f of long.filter((f) => f.reason)) {
  console.log(`ok   ${f.where} ${f.name} ${f.length} lines (long-function: ${f.reason})`);
}
for (const f of failing) {
  const why = f.reason === '' ? ' — `long-function:` gives no reason' : '';
  console.log(`FAIL ${f.where} ${f.name} ${f.length} lines${why}`);
}
if (failing.length > 0) {
  console.log(
    `${failing.length} function(s) in ${ROOT}/ longer than ${MAX_LINES} lines: split them, or put ` +
      '`// long-function: <reason>` on the line just above.',
  );
  process.exit(1);
}
console.log(`no function in ${ROOT}/ longer than ${MAX_LINES} lines without a stated reason`);
