import type { Request } from 'express';
import { parsePageRequest, type Page, type PageRequest, type VersionPolicy } from '@svc/core';

/** The page a list request asks for; `page_size` counts only where the policy honours it. */
export function pageRequestOf(req: Request, policy: VersionPolicy): PageRequest {
  const query = req.query as Record<string, unknown>;
  return parsePageRequest(query.page, query.page_size, policy.honoursPageSize);
}

/** The absolute URL of another page of the same list: same path and query, `page` replaced. */
function pageUrl(req: Request, page: number): string {
  const original = req.originalUrl;
  const mark = original.indexOf('?');
  const path = mark < 0 ? original : original.slice(0, mark);
  const query = new URLSearchParams(mark < 0 ? '' : original.slice(mark + 1));
  // Page 1 is the list's own URL, as clients first requested it.
  if (page === 1) query.delete('page');
  else query.set('page', String(page));
  const search = query.toString();
  const host = req.host ?? 'localhost';
  return `${req.protocol}://${host}${path}${search === '' ? '' : `?${search}`}`;
}

/** The paginated list envelope `{count, next, previous, results}`. */
export function envelope<T>(
  req: Request,
  request: PageRequest,
  page: Page<T>,
  present: (item: T) => unknown,
): Record<string, unknown> {
  const hasNext = request.page * request.pageSize < page.count;
  return {
    count: page.count,
    next: hasNext ? pageUrl(req, request.page + 1) : null,
    previous: request.page > 1 ? pageUrl(req, request.page - 1) : null,
    results: page.items.map(present),
  };
}
