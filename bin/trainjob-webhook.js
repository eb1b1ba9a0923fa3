#!/usr/bin/env node
// Bootstrap: checks the Node version (from a checkout Node 24 runs the TypeScript sources directly;
// the image runs them compiled by npm run build, with this import rewritten to .js),
// then hands over to src/cli.ts. `npm start`/`npx` put the project's pinned Node 24 first on PATH.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `trainjob-webhook needs Node.js 24 or later (this is ${process.version}).\n` +
      'Run it through npm, which uses the Node 24 the project pins: npm start, or npx trainjob-webhook <command>.\n',
  );
  process.exit(2);
}
const { main } = await import('../src/cli.ts');
const io = {
  out: (t) => process.stdout.write(t.endsWith('\n') ? t : `${t}\n`),
  err: (t) => process.stderr.write(t.endsWith('\n') ? t : `${t}\n`),
};
try {
  const code = await main(process.argv.slice(2), io);
  process.exitCode = code;
} catch (err) {
  process.stderr.write(`trainjob-webhook: ${err?.stack ?? err}\n`);
  process.exitCode = 2;
}
