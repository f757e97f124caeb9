// Jest's Node environment, holding one of the CPU slots while a busy test file runs (from its
// set-up to its tear-down); a file that mostly waits takes none (scripts/test-lanes.cjs).
'use strict';
const { TestEnvironment } = require('jest-environment-node');
const { takeCpuSlot, waitsMostly } = require('./test-lanes.cjs');

class SlotEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.testPath = context.testPath;
    this.giveBack = null;
  }

  async setup() {
    if (!waitsMostly(this.testPath)) this.giveBack = await takeCpuSlot(this.testPath);
    await super.setup();
  }

  async teardown() {
    try {
      await super.teardown();
    } finally {
      this.giveBack?.();
      this.giveBack = null;
    }
  }
}

module.exports = SlotEnvironment;
