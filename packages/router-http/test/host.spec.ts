import { hostNameOf, wildcardOf } from '../src';

describe('hostNameOf', () => {
  it.each([
    ['myapp.localhost', 'myapp.localhost'],
    ['MyApp.Example.COM', 'myapp.example.com'],
    ['www.example.com:8080', 'www.example.com'],
    ['www.example.com.', 'www.example.com'],
    ['www.example.com.:443', 'www.example.com'],
    [' localhost ', 'localhost'],
    ['127.0.0.1:8080', '127.0.0.1'],
  ])('reads %p as %p', (header, expected) => {
    expect(hostNameOf(header)).toBe(expected);
  });

  it.each([[undefined], [''], [':8080'], ['[::1]:8080'], ['www.example.com:http'], ['bad host'], ['-leading.example.com'], ['a..b'], [`${'a'.repeat(250)}.com`]])(
    'refuses %p',
    (header) => {
      expect(hostNameOf(header)).toBeNull();
    },
  );
});

describe('wildcardOf', () => {
  it.each([
    ['www.example.com', '*.example.com'],
    ['a.b.example.org', '*.b.example.org'],
    ['example.com', null],
    ['localhost', null],
  ])('of %p is %p', (host, expected) => {
    expect(wildcardOf(host)).toBe(expected);
  });
});
