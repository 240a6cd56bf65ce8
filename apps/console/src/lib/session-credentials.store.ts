/**
 * The two credentials the console uses, typed into the page and kept in this tab's sessionStorage only:
 * never in a URL, a cookie or a log. Closing the tab forgets them.
 */
export type CredentialName = 'apiKey' | 'adminToken';

const STORAGE_KEYS: Record<CredentialName, string> = {
  apiKey: 'mgw-console.api-key',
  adminToken: 'mgw-console.admin-token',
};

export function readCredential(name: CredentialName): string {
  try {
    return sessionStorage.getItem(STORAGE_KEYS[name]) ?? '';
  } catch {
    return ''; // storage disabled: the value lives as long as the page
  }
}

export function writeCredential(name: CredentialName, value: string): void {
  try {
    if (value === '') sessionStorage.removeItem(STORAGE_KEYS[name]);
    else sessionStorage.setItem(STORAGE_KEYS[name], value);
  } catch {
    // storage disabled: nothing to keep
  }
}
