// Runs the browser tests against a real Console (see hack/e2e):
//   npm run e2e            # needs CONSOLE_URL, TESTENV_TOKEN_VIEWER/OPERATOR, TESTENV_LOGS
// E2E_ONLY=substring,... narrows the tests; E2E_SHOTS sets the screenshot folder;
// SHOT_STYLES / SHOT_THEMES narrow the Style x Theme matrix.
// Prints one line per test and a final "N passed, N failed".
import { runAll } from './harness.mjs';
import './flows.mjs';
import './logs.mjs';
import './logviewer.mjs';
import './defects.mjs';
import './dag.mjs';
import './yaml.mjs';
import './timeline.mjs';
import './capacity.mjs';
import './engine.mjs';
import './watch.mjs';
import './lists.mjs';
import './namespaces.mjs';
import './pages.mjs';
import './kinds.mjs';
import './audit.mjs';

const ok = await runAll();
process.exit(ok ? 0 : 1);
