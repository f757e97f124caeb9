/** One lock per key (the core's KeyedQueue): work on one key runs one at a time, in arrival order. */
export { KeyedQueue as KeyedMutex } from '@svc/core';
