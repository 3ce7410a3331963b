// `node --import ./test/helpers/module-log.mjs …`: appends the URL of every ES module the process
// resolves, one a line, to the file named by GENPIPE_TEST_MODULE_LOG (see module-log-hooks.mjs).
import { register } from 'node:module';

register('./module-log-hooks.mjs', import.meta.url);
