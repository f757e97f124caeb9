// The output rules are the core's (rules/container-output.ts); build steps import them from here.
export { CappedOutput, LineSplitter, MAX_LINE_LENGTH, OutputTail, utf8Prefix } from '@svc/core';
