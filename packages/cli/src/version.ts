/** The client's own version (printed by `svc --version`, sent in User-Agent). */
export const VERSION = '0.1.0';
