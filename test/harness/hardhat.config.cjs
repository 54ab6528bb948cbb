// Minimal Hardhat 2 configuration for the test chain (`hardhat node` started by test/harness/hardhat.ts).
// Chain id 31337, automine on, the default funded accounts of the "test test … junk" mnemonic.
module.exports = {
  solidity: '0.8.28',
  networks: {
    hardhat: {
      chainId: 31337,
      hardfork: 'cancun',
      mining: { auto: true, interval: 0 },
      accounts: { count: 20 },
      loggingEnabled: false,
    },
  },
  paths: { cache: '../../.kasse/hardhat-cache', artifacts: '../../.kasse/hardhat-artifacts' },
};
