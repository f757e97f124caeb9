export { ForgeCertificateParser, CERTIFICATE_MESSAGES } from './certificate-parser';
export { KEY_MESSAGES } from './private-key';
