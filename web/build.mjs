// Bundles the dashboard with esbuild into OUTDIR/app.js and OUTDIR/app.css (and copies
// index.html and favicon.svg there), for the build to embed into gpufleet (web/CMakeLists.txt).
//   node build.mjs --outdir DIR [--node-modules DIR]
// --node-modules: where `npm ci` put the packages (the CMake build installs them in its build
// dir, not in web/, so that several build dirs never share one node_modules).
import { createRequire } from 'node:module';
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? path.resolve(args[i + 1]) : fallback;
};
const outdir = option('--outdir', null);
if (!outdir) {
  console.error('usage: node build.mjs --outdir DIR [--node-modules DIR]');
  process.exit(2);
}
const nodeModules = option('--node-modules', path.join(here, 'node_modules'));
const esbuild = createRequire(path.join(nodeModules, 'noop.js'))('esbuild');

mkdirSync(outdir, { recursive: true });
await esbuild.build({
  entryPoints: { app: path.join(here, 'src/main.jsx') },
  outdir,
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  nodePaths: [nodeModules],
  legalComments: 'eof',  // the packages' licence headers stay in the bundle
  logLevel: 'warning',
});
for (const file of ['index.html', 'favicon.svg']) {
  copyFileSync(path.join(here, file), path.join(outdir, file));
}
