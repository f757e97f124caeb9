#!/usr/bin/env node
import { exitQuietlyOnClosedPipe } from './output';
import { main } from './program';

export { main, buildProgram } from './program';
export { EXIT } from './errors';
export { exitQuietlyOnClosedPipe } from './output';

/** Runs `svc` as a command: a closed stdout or stderr (`svc releases | head -3`) ends it quietly. */
export function runAsCommand(): void {
  exitQuietlyOnClosedPipe(process.stdout);
  exitQuietlyOnClosedPipe(process.stderr);
  void main(process.argv).then((code) => {
    process.exitCode = code;
  });
}

if (require.main === module) runAsCommand();
