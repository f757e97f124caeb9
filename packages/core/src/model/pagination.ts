import { NotFound, ValidationFailed } from '../errors';

/** A window of rows for a repository query. */
export interface Slice {
  offset: number;
  limit: number;
}

/** A page of results with the total count. */
export interface Page<T> {
  count: number;
  items: T[];
}

/** A 1-based page number and its size. */
export interface PageRequest {
  page: number;
  pageSize: number;
}

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

/** The slice of rows a page request covers. */
export function sliceOf(request: PageRequest): Slice {
  return { offset: (request.page - 1) * request.pageSize, limit: request.pageSize };
}

/**
 * Checks that the requested page exists: page 1 always does (even when empty), a later
 * page only when it starts before the end.
 * @throws NotFound when the page is past the end.
 */
export function assertPageExists(request: PageRequest, count: number): void {
  if (request.page > 1 && sliceOf(request).offset >= count) {
    throw new NotFound('PAGE.NOT_FOUND', 'Invalid page.');
  }
}

/**
 * Reads a page request from raw query values. `pageSize` is honoured only when the
 * caller's API version supports it; larger sizes are clamped to MAX_PAGE_SIZE.
 * @throws ValidationFailed when page or page_size is not a positive integer.
 */
export function parsePageRequest(
  page: unknown,
  pageSize: unknown,
  honourPageSize: boolean,
): PageRequest {
  const errors: Record<string, string[]> = {};
  const parsedPage = page === undefined ? 1 : positiveInteger(page);
  if (parsedPage === null) errors.page = ['A valid positive integer is required.'];
  let parsedSize: number | null = DEFAULT_PAGE_SIZE;
  if (honourPageSize && pageSize !== undefined) {
    parsedSize = positiveInteger(pageSize);
    if (parsedSize === null) errors.page_size = ['A valid positive integer is required.'];
  }
  if (Object.keys(errors).length > 0) throw new ValidationFailed(errors);
  return { page: parsedPage as number, pageSize: Math.min(parsedSize as number, MAX_PAGE_SIZE) };
}

function positiveInteger(value: unknown): number | null {
  if (typeof value !== 'string' || !/^[0-9]{1,15}$/.test(value)) return null;
  const n = Number(value);
  return n >= 1 ? n : null;
}
