/** Command groups beyond merchants and keys (chains, payments, …) register here. */
import type { Command } from '../context.ts';
import { evmCommands } from './evm.ts';
import { userCommands } from './users.ts';

export const extraCommands: Command[] = [...evmCommands, ...userCommands];
