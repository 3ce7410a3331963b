#!/usr/bin/env node
// Entry point: runs the TypeScript CLI through tsx's loader, so `npm ci` is the only set-up step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
