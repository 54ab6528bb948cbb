/** A command was called wrongly: the CLI prints the message and exits with status 2. */
export class UsageError extends Error {}
