/** Command groups beyond merchants and keys (chains, payments, …) register here. */
import type { Command } from '../context.ts';
import { solanaCommands } from '../../chains/solana/cli.ts';
import { evmCommands } from './evm.ts';

export const extraCommands: Command[] = [...evmCommands, ...solanaCommands];
