export { FileLogStore, type FileLogStoreOptions } from './file-log-store';
