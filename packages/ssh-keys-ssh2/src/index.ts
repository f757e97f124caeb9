export { Ssh2PublicKeyParser } from './public-key-parser';
