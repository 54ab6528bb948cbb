/** Registers the Medusa integration's package install and build (test/harness/infrastructure.ts finds this file). */
import '../harness/medusa.ts';
