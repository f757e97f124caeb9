/** The database engines this adapter speaks to. */
export type Dialect = 'sqlite' | 'postgres';
