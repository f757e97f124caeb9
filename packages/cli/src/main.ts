#!/usr/bin/env node
import { main } from './program';

export { main, buildProgram } from './program';
export { EXIT } from './errors';

if (require.main === module) {
  void main(process.argv).then((code) => {
    process.exitCode = code;
  });
}
