// Compiled by the parent project of tests/install/subproject: builds only if inkling's
// -Wall -Wextra -Werror did not leak onto the parent's targets.
int main(int argc, char** argv) {
  int unused = argc;
  return 0;
}
