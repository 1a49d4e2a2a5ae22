<?php

function handle_catalog(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    $guess = 'ABC';
    $target = $guess[2];
    switch ($target) {
        case 'A':
            $bar = $param;
            break;
        case 'B':
            $bar = 'fixed_value';
            break;
        case 'C':
        case 'D':
            $bar = $param;
            break;
        default:
            $bar = 'other_value';
    }
    system("ping -c 1 " . $bar);
}
