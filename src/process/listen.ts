// Where the servers listen. By default every address: `::` with dual-stack (Node leaves ipv6Only
// false, so IPv4 clients arrive as ::ffff:a.b.c.d), as Go's net.Listen(":port") does for
// controller-runtime's servers, so that IPv6-only and dual-stack clusters reach the pod; on a host
// without IPv6, `0.0.0.0`. An address given with --host / --ops-host is used alone, never replaced.

/** Every address: dual-stack first, IPv4 alone where the host has no IPv6. */
export const EVERY_ADDRESS: readonly string[] = ['::', '0.0.0.0'];

/** Binding an IPv6 address on a host without IPv6: no IPv6 in the kernel, or no such address. */
const NO_IPV6 = new Set(['EAFNOSUPPORT', 'EADDRNOTAVAIL']);

export interface Listenable {
  listen(options: { host: string; port: number }): Promise<string>;
}

/**
 * Listens on `host`, or, when it is undefined, on the first of `everyAddress` the host can bind;
 * resolves to the address URL. Only a missing IPv6 moves on to the next candidate: a busy port
 * is an error on any of them.
 */
export async function listenOn(
  server: Listenable,
  host: string | undefined,
  port: number,
  everyAddress: readonly string[] = EVERY_ADDRESS,
): Promise<string> {
  if (host !== undefined) return server.listen({ host, port });
  for (let i = 0; ; i++) {
    try {
      return await server.listen({ host: everyAddress[i]!, port });
    } catch (err) {
      const last = i === everyAddress.length - 1;
      if (last || !NO_IPV6.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
    }
  }
}
