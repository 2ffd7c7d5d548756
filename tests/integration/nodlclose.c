/* SPDX-License-Identifier: MIT */
/*
 * Preloaded into test clients in sanitizer runs only: keeps every shared
 * library loaded until exit, so LeakSanitizer can attribute (and the
 * suppressions can match) leaks inside drivers the loader has unloaded.
 */
int dlclose(void *handle);

int
dlclose(void *handle)
{
   (void)handle;
   return 0;
}
