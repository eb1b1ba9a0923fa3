// `node hack/go-isprint.ts [--check] [GOROOT | path/to/strconv/isprint.go]`: writes
// src/field/go-isprint-tables.ts, the tables of Go's strconv.IsPrint (what `%q` keeps unescaped)
// of the Go it is given, which src/field/go-isprint.ts reads, so that goQuote decides as the API
// server does whatever Unicode version Node's ICU has. Without a path it asks `go env GOROOT`.
// `--check` writes nothing and exits 1 when the file is stale. Needs Go (its source tree) only to
// run; the generated file is committed.
//
// It parses the generated tables of strconv/isprint.go (isPrint16, isNotPrint16, isPrint32,
// isNotPrint32, isGraphic) and copies them as they are. The code that reads them
// (src/field/go-isprint.ts, written by hand) ports strconv/quote.go's IsPrint, IsGraphic,
// isInGraphicList and bsearch as their text is in Go 1.26, whose SHA-256 is in PORTED below: a Go
// whose functions differ is refused, so a change of the algorithm is ported by hand (then PORTED
// updated) rather than paired with tables it does not fit.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The generated file, relative to the project root. */
export const GENERATED = 'src/field/go-isprint-tables.ts';

/** SHA-256 of each quote.go function isGoPrint/isGoGraphic port (go1.26's text). */
const PORTED: Record<string, string> = {
  IsPrint: '7f2ebc25e3bbac1d36f7d39e1bb6809f746b39308b8989585860562330cf6310',
  IsGraphic: 'fb1be71c6f8f7246ec2da0694a7325bad6c80596315231f0e5cb481bd771984f',
  isInGraphicList: 'ec8ba4605df396dbc126269ff5d77299e880ffe677437db28211593da26ef83b',
  bsearch: '47149c8f8d41c399e7d786746bae07fcdfeed87d40d507079854a07f888bb4de',
};

/** The tables of isprint.go, in its order, with the Go element type each must have. */
const TABLES = [
  ['isPrint16', 'uint16'],
  ['isNotPrint16', 'uint16'],
  ['isPrint32', 'uint32'],
  ['isNotPrint32', 'uint16'],
  ['isGraphic', 'uint16'],
] as const;
type TableName = (typeof TABLES)[number][0];

/** Where the Go source tree is: the argument (a GOROOT, or its src/strconv/isprint.go), else `go env GOROOT`. */
export function goroot(arg?: string): string {
  if (arg === undefined) return execFileSync('go', ['env', 'GOROOT'], { encoding: 'utf8' }).trim();
  const at = path.resolve(arg);
  // GOROOT/src/strconv/isprint.go: three folders up.
  return at.endsWith('.go') ? path.dirname(path.dirname(path.dirname(at))) : at;
}

/** The Go release of a GOROOT: the first line of its VERSION file (`go1.26.8`). */
export function goVersion(root: string): string {
  const file = path.join(root, 'VERSION');
  if (!existsSync(file)) throw new Error(`${file} not found: cannot tell which Go the tables are from`);
  return readFileSync(file, 'utf8').split('\n')[0]!.trim();
}

/** The Unicode version of package unicode's tables (`15.0.0`), which makeisprint.go read. */
function unicodeVersion(root: string): string {
  const text = readFileSync(path.join(root, 'src/unicode/tables.go'), 'utf8');
  const m = /^const Version = "([^"]+)"$/m.exec(text);
  if (!m) throw new Error('src/unicode/tables.go: no `const Version = "..."`');
  return m[1]!;
}

/** `// Copyright 2013 The Go Authors.` of a Go file: its year. */
function copyrightYear(file: string, text: string): string {
  const m = /^\/\/ Copyright (\d{4}) The Go Authors\. All rights reserved\.$/m.exec(text);
  if (!m) throw new Error(`${file}: no Go Authors copyright line`);
  return m[1]!;
}

/** Refuse a quote.go whose IsPrint (or the functions it uses) is not the text the port follows. */
function checkPorted(quoteGo: string): void {
  for (const [name, sha] of Object.entries(PORTED)) {
    const m = new RegExp(`^func ${name}\\b[^\\n]*\\{\\n[\\s\\S]*?^\\}$`, 'm').exec(quoteGo);
    if (!m) throw new Error(`strconv/quote.go: func ${name} not found`);
    const got = createHash('sha256').update(m[0]).digest('hex');
    if (got !== sha)
      throw new Error(
        `strconv/quote.go: func ${name} is not the text ${GENERATED} ports (SHA-256 ${got}): ` +
          'port the change by hand, then update PORTED in hack/go-isprint.ts',
      );
  }
}

/** The five tables of isprint.go, checked: hex numbers in ascending order, ranges in pairs. */
export function parseIsPrint(text: string): Map<TableName, number[]> {
  const tables = new Map<TableName, number[]>();
  for (const m of text.matchAll(/^var (\w+) = \[\](\w+)\{([^}]*)\}$/gm)) {
    const [, name, type, body] = m as unknown as [string, string, string, string];
    const want = TABLES.find(([n]) => n === name);
    if (!want) throw new Error(`isprint.go: unexpected table ${name}`);
    if (type !== want[1]) throw new Error(`isprint.go: ${name} is []${type}, not []${want[1]}`);
    const values = body
      .replace(/\/\/[^\n]*/g, '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
      .map((s) => {
        if (!/^0x[0-9a-f]+$/.test(s)) throw new Error(`isprint.go: ${name}: ${s} is not a hex number`);
        return Number.parseInt(s.slice(2), 16);
      });
    const max = type === 'uint16' ? 0xffff : 0xffffffff;
    // Ranges may be single runes (lo == hi); the other tables are sets.
    const ranges = name === 'isPrint16' || name === 'isPrint32';
    values.forEach((v, i) => {
      if (v > max) throw new Error(`isprint.go: ${name}[${i}] = ${v} does not fit ${type}`);
      if (i > 0 && (ranges ? v < values[i - 1]! : v <= values[i - 1]!))
        throw new Error(`isprint.go: ${name} is not in ascending order at ${i}`);
    });
    if (ranges && values.length % 2 !== 0) throw new Error(`isprint.go: ${name} has an odd length`);
    tables.set(name as TableName, values);
  }
  for (const [name] of TABLES) if (!tables.has(name)) throw new Error(`isprint.go: table ${name} not found`);
  if (!/^var isNotPrint32 = \[\]uint16\{ \/\/ add 0x10000 to each entry$/m.test(text))
    throw new Error('isprint.go: isNotPrint32 no longer says "add 0x10000 to each entry"');
  return tables;
}

/**
 * A table as Prettier prints an array of numbers (its fill layout, printWidth 120): as many
 * `0x....,` per line as fit after the two-space indent.
 */
function arrayLiteral(name: string, values: number[], digits: number, comment: string): string {
  const items = values.map((v) => `0x${v.toString(16).padStart(digits, '0')},`);
  const lines: string[] = [];
  let line = '';
  for (const item of items) {
    if (line !== '' && 2 + line.length + 1 + item.length > 120) {
      lines.push(line);
      line = '';
    }
    line = line === '' ? item : `${line} ${item}`;
  }
  if (line !== '') lines.push(line);
  return `${comment}export const ${name}: readonly number[] = [\n${lines.map((l) => `  ${l}`).join('\n')}\n];\n`;
}

/** The content of src/field/go-isprint-tables.ts generated from a GOROOT's strconv. */
export function goIsPrintSource(root: string): string {
  const isprintGo = readFileSync(path.join(root, 'src/strconv/isprint.go'), 'utf8');
  const quoteGo = readFileSync(path.join(root, 'src/strconv/quote.go'), 'utf8');
  checkPorted(quoteGo);
  const t = parseIsPrint(isprintGo);
  const go = goVersion(root);
  const years = [copyrightYear('quote.go', quoteGo), copyrightYear('isprint.go', isprintGo)];
  const table = (name: TableName, digits: number, comment: string) => arrayLiteral(name, t.get(name)!, digits, comment);
  const licence = readFileSync(path.join(root, 'LICENSE'), 'utf8');
  return `${header(go, unicodeVersion(root), years, licence)}
${table('isPrint16', 4, '// Ranges [lo, hi] of printable runes below 0x10000, in pairs.\n')}
${table('isNotPrint16', 4, '// Unprintable runes inside those ranges.\n')}
${table('isPrint32', 6, '// Ranges [lo, hi] of printable runes from 0x10000 on, in pairs.\n')}
${table('isNotPrint32', 4, '// Unprintable runes inside those ranges below 0x20000: add 0x10000 to each entry.\n')}
${table('isGraphic', 4, '// isGraphic lists the graphic runes not matched by IsPrint.\n')}`;
}

/** Go's LICENSE as comment lines: the BSD licence asks for its text to stay with the code. */
function licenceComment(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((line) => (line === '' ? '//' : `// ${line}`))
    .join('\n');
}

function header(go: string, unicode: string, [quoteYear, isprintYear]: string[], licence: string): string {
  return `// Code generated by \`node hack/go-isprint.ts\` from ${go}'s src/strconv/isprint.go; DO NOT EDIT.
//
// The tables of Go's strconv.IsPrint (${go}, package unicode's tables: Unicode ${unicode}), which
// \`%q\` (strconv.Quote) uses to keep a rune or escape it, copied from isprint.go as they are.
// go-isprint.ts reads them as strconv/quote.go does, so that goQuote (gofmt.ts) quotes as the API
// server does whatever Unicode version Node's ICU has.
//
// The tables and the code ported are Go's: Copyright ${quoteYear} (quote.go), ${isprintYear} (isprint.go)
// The Go Authors. All rights reserved. Use of this source code is governed by a BSD-style license
// that can be found in Go's LICENSE file (https://go.dev/LICENSE), whose text follows:
//
${licenceComment(licence)}
`;
}

function main(): number {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  const paths = args.filter((a) => a !== '--check');
  if (paths.length > 1) throw new Error('usage: node hack/go-isprint.ts [--check] [GOROOT | path/to/isprint.go]');
  const content = goIsPrintSource(goroot(paths[0]));
  const at = path.join(projectRoot, GENERATED);
  const current = existsSync(at) ? readFileSync(at, 'utf8') : undefined;
  if (current === content) return 0;
  if (check) {
    console.error(`${GENERATED} is stale: run node hack/go-isprint.ts`);
    return 1;
  }
  writeFileSync(at, content);
  console.log(`wrote ${GENERATED}`);
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main();
