// Where styles live (run by `npm run lint`): tokens.css, base.css and
// controls.css are the only global stylesheets, imported by main.tsx before
// the App (Vite orders CSS by import order, so component rules come after
// them); every other rule sits in a stylesheet beside its component or page,
// imported by it. Fails when base.css grows back past a small size, when a
// stylesheet under src/components or src/pages is imported by nothing beside
// it, or when src/styles gains another global stylesheet.
import { readFileSync, readdirSync } from 'node:fs';

const BASE_LIMIT = 150;
const GLOBAL = ['tokens.css', 'base.css', 'controls.css'];
const src = new URL('../src/', import.meta.url);
const problems = [];

const baseLines = readFileSync(new URL('styles/base.css', src), 'utf8').split('\n').length - 1;
if (baseLines > BASE_LIMIT)
  problems.push(`src/styles/base.css has ${baseLines} lines (at most ${BASE_LIMIT}): put component rules in a stylesheet beside the component`);

for (const f of readdirSync(new URL('styles/', src)))
  if (f.endsWith('.css') && !GLOBAL.includes(f)) problems.push(`src/styles/${f}: global stylesheets are ${GLOBAL.join(', ')}; put it beside its component`);

const main = readFileSync(new URL('main.tsx', src), 'utf8');
const app = main.indexOf("from './App'");
for (const f of GLOBAL) {
  const at = main.indexOf(`import './styles/${f}';`);
  if (at < 0 || at > app) problems.push(`src/main.tsx must import './styles/${f}' before './App'`);
}

for (const dir of ['components', 'pages']) {
  const files = readdirSync(new URL(`${dir}/`, src));
  const code = files
    .filter((f) => /\.tsx?$/.test(f))
    .map((f) => readFileSync(new URL(`${dir}/${f}`, src), 'utf8'))
    .join('\n');
  for (const f of files.filter((x) => x.endsWith('.css')))
    if (!code.includes(`import './${f}';`)) problems.push(`src/${dir}/${f} is imported by no module in src/${dir}`);
}

for (const p of problems) console.error(p);
if (problems.length) process.exit(1);
