// Placeholder until the generator lands; keeps the tree building.
#include "data_source.h"
