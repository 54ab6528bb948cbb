#!/usr/bin/env node
// Package bin: runs the TypeScript CLI through tsx so `kasse` and `npm run kasse --` behave the same.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli/index.ts');
